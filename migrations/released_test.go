package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"testing"
)

// released holds the SHA-256 of every released migration. A database that
// applied a file never applies it again, so an edit to a released file reaches
// no existing database: a change is a new file. Add a file here when its
// release is cut; never change a digest.
var released = map[string]string{
	"00001_schema.sql": "d0c5641e7cbe8d8d51ae7f9bbde7607c63a7e309fd45581d053a9e0aaf5cca46", // 0.1.0
	"00002_v0_2_0.sql": "a8d1ef4df44589661901f91848a4481d59cc3ef73e0de1f6aa6affc38a94c4d5", // 0.2.0
}

func TestReleasedMigrationsAreNeverEdited(t *testing.T) {
	for name, want := range released {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Errorf("released migration %s: %v (a released file is never renamed or removed)", name, err)
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("released migration %s was edited (sha256 %s, released as %s): put the change in a new file", name, got, want)
		}
	}
}
