package ingest

import "errors"

// CanonicalProfileURL is a profile URL as an upload stores it (https, host
// in lower case without www., no trailing slash), or why it is not one: the
// form that finds a person named by a profile URL outside an upload (an
// erasure).
func CanonicalProfileURL(raw string) (string, error) { return canonical(canonicalProfileURL, raw) }

// CanonicalEmail is a bare email address as an upload stores it (lower case).
func CanonicalEmail(raw string) (string, error) { return canonical(canonicalEmail, raw) }

// CanonicalDomain is a company's domain as an upload stores it.
func CanonicalDomain(raw string) (string, error) { return canonical(canonicalDomain, raw) }

func canonical(f func(string) (string, string), raw string) (string, error) {
	v, msg := f(raw)
	if msg != "" {
		return "", errors.New(msg)
	}
	return v, nil
}
