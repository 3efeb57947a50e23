package web_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// bigPart is larger than what net/http's ParseMultipartForm keeps in
// memory (the page's 8 MiB): parsed that way, such a file part would spill
// to a temporary file.
const bigPart = 9 << 20

// No form of the page leaves a file in the temporary directory: not a
// stranger's sign-in with a big file part (refused), not a tenant's upload
// of a big list (accepted), not a forged upload. The temporary directory
// is a fresh one (os.TempDir honours $TMPDIR), counted after each.
func TestNoTemporaryFiles(t *testing.T) {
	// Not parallel: it sets TMPDIR for the whole process.
	s := newStack(t, jobstest.Options{NoWorker: true}, false)
	p := s.person(t)
	p.signIn(keyA)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	left := func(after string) {
		t.Helper()
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			names := make([]string, len(entries))
			for i, e := range entries {
				names[i] = e.Name()
			}
			t.Errorf("%s: %d files left in the temporary directory: %v", after, len(entries), names)
		}
	}
	junk := bytes.Repeat([]byte("x"), bigPart)
	form := func(fields [][2]string, file []byte) (string, *bytes.Buffer) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for _, f := range fields {
			_ = mw.WriteField(f[0], f[1])
		}
		if file != nil {
			fw, _ := mw.CreateFormFile("file", "big.csv")
			_, _ = fw.Write(file)
		}
		_ = mw.Close()
		return mw.FormDataContentType(), &b
	}

	// A stranger's sign-in, with and without the form's own token.
	stranger := s.person(t)
	_, page := stranger.get("/ui/signin")
	for _, token := range []string{"forged", csrf(t, page)} {
		ct, body := form([][2]string{{"csrf", token}, {"key", "not-a-key"}}, junk)
		resp, _ := stranger.postMultipart("/ui/signin", ct, body)
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("a multipart sign-in with a big file part (token %.6s): %s, want refused", token, resp.Status)
		}
		left("a refused sign-in with a big file part")
	}

	// A forged upload, and one whose token comes after its file: refused
	// before the file is received, nothing stored.
	uploads := storetest.Uploads(t, s.Store)
	for name, fields := range map[string][][2]string{"forged": {{"csrf", "forged"}}, "no token": nil} {
		ct, body := form(fields, junk)
		if resp, _ := p.postMultipart("/ui/jobs/new", ct, body); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a %s upload: %s, want 403", name, resp.Status)
		}
		left("a " + name + " upload")
	}
	_, page = p.get("/ui/jobs/new")
	var after bytes.Buffer
	mw := multipart.NewWriter(&after)
	fw, _ := mw.CreateFormFile("file", "big.csv")
	_, _ = fw.Write(junk)
	_ = mw.WriteField("csrf", csrf(t, page))
	_ = mw.Close()
	if resp, _ := p.postMultipart("/ui/jobs/new", mw.FormDataContentType(), &after); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an upload whose token follows its file: %s, want 403", resp.Status)
	}
	left("an upload whose token follows its file")
	if n := storetest.Uploads(t, s.Store); n != uploads {
		t.Errorf("refused uploads stored %d uploads", n-uploads)
	}

	// A tenant's list larger than the form's memory: estimated, and
	// nothing on disk.
	list := bigList(bigPart)
	resp, page := p.upload("big.csv", list, url.Values{"lookups": {"profile"}, "name": {"big list"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="confirm"`) || !strings.Contains(page, "big list") {
		t.Fatalf("a %d MiB list: %s\n%.2000s", len(list)>>20, resp.Status, page)
	}
	left("an accepted upload of a big list")
}

// bigList is a CSV of people, name and company, with a long note each, of
// at least n bytes.
func bigList(n int) []byte {
	var b bytes.Buffer
	b.WriteString("name,company,note\n")
	note := strings.Repeat("n", 4000)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Person %d,Company %d AG,%s\n", i, i, note)
	}
	return b.Bytes()
}
