package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/service"
)

// Every parse of an upload takes an upload slot, whatever the door calls:
// with the tenant's slots held, storing a file, estimating or submitting a
// stored upload by its id, and a list given inline are refused with
// *TooManyUploadsError; another tenant is not; a slot a door holds is the
// one its parse uses.
func TestEveryParseOfAnUploadTakesASlot(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t)
	ctx := context.Background()
	up := mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
	var releases []func()
	for range service.DefaultUploadsPerTenant {
		_, release, err := svc.UploadSlot(ctx, acme)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	byID := service.Submission{UploadID: up.ID, Options: jobOptions()}
	for name, call := range map[string]func(service.Principal) error{
		"upload": func(p service.Principal) error {
			_, err := svc.Upload(ctx, p, service.UploadRequest{Format: service.FormatCSV, Body: strings.NewReader(crmCSV), Options: fileOptions()})
			return err
		},
		"estimate by id": func(p service.Principal) error { _, err := svc.Estimate(ctx, p, byID); return err },
		"submit by id":   func(p service.Principal) error { _, _, err := svc.Submit(ctx, p, byID); return err },
		"estimate inline": func(p service.Principal) error {
			_, err := svc.Estimate(ctx, p, inlineCSV(crmCSV, jobOptions()))
			return err
		},
	} {
		var tm *service.TooManyUploadsError
		if err := call(acme); !errors.As(err, &tm) {
			t.Errorf("%s with the tenant's slots taken: %v, want *TooManyUploadsError", name, err)
		}
		if name == "upload" || name == "estimate inline" {
			if err := call(beta); err != nil {
				t.Errorf("%s of another tenant: %v", name, err)
			}
		}
	}
	// A door holding a slot for the upload parses in it.
	releases[0]()
	held, release, err := svc.UploadSlot(ctx, acme)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := svc.Estimate(held, acme, byID); err != nil {
		t.Fatalf("an estimate in the slot its door holds: %v", err)
	}
	if _, err := svc.Estimate(ctx, acme, inlineCSV(crmCSV, jobOptions())); !errors.As(err, new(*service.TooManyUploadsError)) {
		t.Fatalf("an estimate without a slot while all are held: %v", err)
	}
}
