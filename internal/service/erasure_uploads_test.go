package service_test

import (
	"context"
	"errors"
	"testing"
	"unicode/utf16"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest/ingesttest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// utf16File is text as Excel's "Unicode text" saves it: UTF-16LE with a BOM.
func utf16File(text string) string {
	b := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(text)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// An erasure finds the person in stored uploads however the file wrote
// them: an email in another case in a CSV, in an .xlsx (a zip) and in a
// UTF-16 file; a profile URL with www. and a trailing slash; a name with a
// company in other case and spacing. Those uploads are deleted and counted;
// another person's upload stays.
func TestErasureFindsThePersonInStoredUploads(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		ErasureKey: []byte("an erasure key of at least thirty-two characters")})
	admin := service.Principal{Tenant: "acme", KeyID: "k-admin", Scopes: domain.Scopes}
	const person = "ref,email,company\nr1,Jane.Doe@Example.COM,Acme\n"
	byEmail := []service.Upload{
		mustUpload(t, svc, admin, service.FormatCSV, person),
		mustUpload(t, svc, admin, service.FormatXLSX, string(ingesttest.XLSXOfCSV(t, person))),
		mustUpload(t, svc, admin, service.FormatCSV, utf16File(person)),
	}
	byURL := mustUpload(t, svc, admin, service.FormatTSV, "Profile URL\tNotes\nhttps://www.Platform.example/in/jane-doe/\tmet at a fair\n")
	byName := mustUpload(t, svc, admin, service.FormatCSV, "Full Name,Account Name\n\"JANE   doe\",ACME  GmbH\n")
	other := mustUpload(t, svc, admin, service.FormatCSV, "email,name,company\nbob@example.com,Jane Doe,Globex\n")

	for _, c := range []struct {
		req     service.ErasureRequest
		uploads int64
		gone    []service.Upload
	}{
		{service.ErasureRequest{Email: "jane.doe@example.com"}, 3, byEmail},
		{service.ErasureRequest{ProfileURL: "https://platform.example/in/jane-doe"}, 1, []service.Upload{byURL}},
		{service.ErasureRequest{Name: "Jane Doe", Company: "Acme GmbH"}, 1, []service.Upload{byName}},
	} {
		e, err := svc.Erase(context.Background(), admin, c.req)
		if err != nil {
			t.Fatal(err)
		}
		if e.Receipt["uploads"] != c.uploads {
			t.Errorf("erasing %+v: the receipt counts %d uploads, want %d", c.req, e.Receipt["uploads"], c.uploads)
		}
		for _, up := range c.gone {
			if _, err := svc.GetUpload(context.Background(), admin, up.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("erasing %+v: upload %s (%s) is still there: %v", c.req, up.ID, up.Format, err)
			}
		}
	}
	if _, err := svc.GetUpload(context.Background(), admin, other.ID); err != nil {
		t.Fatalf("another person's upload: %v", err)
	}
}
