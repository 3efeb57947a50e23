package upstream

import "net/http"

// NoRedirects returns a copy of hc that follows no redirect: a 3xx answer
// is returned as it is (the vendor client classes it transient, the
// platform client rejected). Every call of the upstream clients carries a
// secret (the vendor key, a member's token, the app's client secret), and
// net/http keeps the Authorization header on a redirect to the same host,
// a downgrade to plain http included: the upstream is called where it was
// configured, or not at all.
func NoRedirects(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}
