package enrich

import "strings"

// AddressHost is the domain of an email address local@host, in lower
// case; "" when addr is not one: no single @, an empty part, blanks or list
// separators, a host without a dot. A vendor's email that is not an
// address is not an email, whatever else its answer says.
func AddressHost(addr string) string {
	local, host, ok := strings.Cut(addr, "@")
	if !ok || local == "" || strings.Contains(host, "@") || strings.ContainsAny(addr, " \t\r\n<>,;") ||
		!strings.Contains(strings.Trim(host, "."), ".") {
		return ""
	}
	return strings.ToLower(host)
}
