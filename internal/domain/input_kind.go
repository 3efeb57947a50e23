package domain

// InputKind is what a row gives to look its profile up by (job_rows.input_kind).
type InputKind string

// The input kinds.
const (
	InputProfileURL  InputKind = "profile_url"  // the profile's URL
	InputEmail       InputKind = "email"        // an email address: find the profile behind it
	InputNameCompany InputKind = "name_company" // a person's name or a role title, and a company
	InputNameDomain  InputKind = "name_domain"  // a person's name or a role title, and the company's website domain
	InputMember      InputKind = "member"       // a member of a connected platform account (member sync jobs)
)

// InputKinds lists every input kind.
var InputKinds = []InputKind{InputProfileURL, InputEmail, InputNameCompany, InputNameDomain, InputMember}

// Valid reports whether k is one of InputKinds.
func (k InputKind) Valid() bool {
	switch k {
	case InputProfileURL, InputEmail, InputNameCompany, InputNameDomain, InputMember:
		return true
	}
	return false
}
