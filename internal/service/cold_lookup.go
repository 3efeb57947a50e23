package service

import (
	"errors"

	"github.com/enrichq/enrichq/internal/platform/platformapi"
)

// The cold-lookup rule: the platform's API reads only the profile of a
// member who signed in and consented; a request to look a profile up by
// URL through it (a cold lookup) is refused before any call, and goes to
// the vendor in a job. The doors ask the service, never the platform.

// ErrColdLookup matches every refusal of a cold lookup (errors.Is).
var ErrColdLookup = platformapi.ErrColdLookup

// ProfileLookupParams are the names a request to look a profile up by URL
// through the platform might use: any of them is a cold lookup.
var ProfileLookupParams = []string{"profile_url", "profile_urls", "url", "urls", "rows", "vanity_name"}

// ColdLookupError is the refusal of a request to look input up through the
// platform.
func ColdLookupError(input string) error { return platformapi.ColdLookupError(input) }

// ColdLookupMessage is what a refusal of a cold lookup says (err matches
// ErrColdLookup).
func ColdLookupMessage(err error) string {
	if pe, ok := platformapi.AsError(err); ok {
		return pe.Message
	}
	var pe *platformapi.Error
	if errors.As(platformapi.ColdLookupError(""), &pe) {
		return pe.Message
	}
	return err.Error()
}

// LooksLikeProfileURL reports whether s names a profile by URL or path
// ("/in/jane-doe") rather than a member id.
func LooksLikeProfileURL(s string) bool { return platformapi.LooksLikeProfileURL(s) }
