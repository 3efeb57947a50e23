package domain

import "testing"

func TestJobState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s               JobState
		valid, runnable bool
	}{
		{JobQueued, true, true},
		{JobRunning, true, true},
		{JobPaused, true, false},
		{JobCompleted, true, false},
		{JobCanceled, true, false},
		{JobFailed, true, false},
		{"pending", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := tt.s.Valid(); got != tt.valid {
			t.Errorf("%q.Valid() = %v, want %v", tt.s, got, tt.valid)
		}
		if got := tt.s.Runnable(); got != tt.runnable {
			t.Errorf("%q.Runnable() = %v, want %v", tt.s, got, tt.runnable)
		}
	}
	for _, s := range JobStates {
		if !s.Valid() {
			t.Errorf("JobStates holds %q, which is not Valid", s)
		}
	}
}

func TestStage(t *testing.T) {
	t.Parallel()
	want := []Stage{"profile", "email", "phone"}
	if len(Stages) != len(want) {
		t.Fatalf("Stages = %q, want %q", Stages, want)
	}
	for i, s := range Stages {
		if s != want[i] || !s.Valid() {
			t.Errorf("Stages[%d] = %q (valid %v), want %q", i, s, s.Valid(), want[i])
		}
	}
	for _, s := range []Stage{StageBulk, "", "no_match", "Profile"} {
		if s.Valid() {
			t.Errorf("%q.Valid() = true, want false", s)
		}
	}
}

func TestInputKind(t *testing.T) {
	t.Parallel()
	for _, k := range InputKinds {
		if !k.Valid() {
			t.Errorf("InputKinds holds %q, which is not Valid", k)
		}
	}
	for _, k := range []InputKind{"", "name", "company", "url"} {
		if k.Valid() {
			t.Errorf("%q.Valid() = true, want false", k)
		}
	}
}

func TestSegmentOf(t *testing.T) {
	for _, c := range []struct {
		kind     InputKind
		dom, loc string
		want     string
	}{
		{InputNameDomain, "acme.fr", "", "name_domain/fr"},
		{InputNameDomain, "Acme.CO.UK.", "Paris, France", "name_domain/gb"}, // the TLD names the company
		{InputNameDomain, "acme.com", "Lyon, France", "name_domain/fr"},
		{InputEmail, "acme.io", "", "email/"}, // a generic ccTLD says nothing
		{InputProfileURL, "", "Somewhere, Atlantis", "profile_url/"},
		{InputNameCompany, "", "berlin, de", "name_company/de"},
	} {
		got := SegmentOf(c.kind, c.dom, c.loc)
		if got.String() != c.want {
			t.Errorf("SegmentOf(%s, %q, %q) = %s, want %s", c.kind, c.dom, c.loc, got, c.want)
		}
		back, ok := ParseSegment(got.String())
		if !ok || back != got {
			t.Errorf("ParseSegment(%q) = %v, %v", got.String(), back, ok)
		}
	}
	if _, ok := ParseSegment("bogus/fr"); ok {
		t.Error(`ParseSegment("bogus/fr") accepted an unknown kind`)
	}
}
