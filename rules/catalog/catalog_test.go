package catalog

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// rulesPath is where the team's working paraphrase of the clauses
// (RULES.md, kept beside the repository, not part of it) sits when a
// checkout has it, relative to this package's directory. The catalogue is
// the project's source; the tests that read this file only cross-check
// the catalogue against the team's notes when both are at hand, and skip
// otherwise.
const rulesPath = "../../../shared/spec/RULES.md"

// clauseID matches a public clause number ("C9-95", "o9-66", "C9-113.a1",
// "C9-150.2.1", "o9-95.2.2").
var clauseID = regexp.MustCompile(`^[Co]\d+-\d+(\.[0-9a-z]+)*$`)

// folderName is the shape every folder name must have.
var folderName = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)

// indexRow is one row of the team paraphrase's index table of clauses.
type indexRow struct {
	id, section, binds, level, status string
}

// readRules returns the lines of the team's paraphrase, skipping the test
// if it is absent (a checkout of the repository alone).
func readRules(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(rulesPath)
	if os.IsNotExist(err) {
		t.Skipf("%s not present (the team's clause notes, outside the repository): cross-check of the catalogue against them skipped", rulesPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// parseIndex extracts the index table of clauses ("### Index") from the
// team's paraphrase.
func parseIndex(t *testing.T, lines []string) []indexRow {
	t.Helper()
	start := slices.Index(lines, "### Index")
	if start < 0 {
		t.Fatalf("%s has no \"### Index\" heading", rulesPath)
	}
	var rows []indexRow
	inTable, header := false, true
	for _, l := range lines[start+1:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		if header { // column titles
			header = false
			continue
		}
		if strings.Contains(l, "---") { // separator row
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "**", ""))
		}
		if len(cells) < 5 {
			t.Fatalf("index row with %d cells: %q", len(cells), l)
		}
		rows = append(rows, indexRow{cells[0], cells[1], cells[2], cells[3], cells[4]})
	}
	if len(rows) == 0 {
		t.Fatalf("%s: index table is empty", rulesPath)
	}
	return rows
}

func TestIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range All() {
		if e.ID == "" {
			t.Error("entry with empty ID")
		}
		if seen[e.ID] {
			t.Errorf("duplicate ID %q", e.ID)
		}
		seen[e.ID] = true
	}
}

func TestFolderExamples(t *testing.T) {
	for id, want := range map[string]string{
		"C9-95":         "c9_95",
		"C9-113.a1":     "c9_113_a1",
		"o9-95.2.2":     "o9_95_2_2",
		"C9-150.2.1":    "c9_150_2_1",
		"§9.7.5.2":      "s9_7_5_2",
		"§9.7.5.1.2":    "s9_7_5_1_2",
		"Table-58":      "table_58",
		"retry-counter": "retry_counter",
		"go-back-n":     "go_back_n",
		"a--b..c":       "a_b_c",
	} {
		if got := Folder(id); got != want {
			t.Errorf("Folder(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestFoldersUniqueAndWellFormed(t *testing.T) {
	seen := map[string]string{}
	for _, e := range All() {
		f := Folder(e.ID)
		if !folderName.MatchString(f) {
			t.Errorf("Folder(%q) = %q does not match %s", e.ID, f, folderName)
		}
		if strings.HasPrefix(e.ID, "§") && !strings.HasPrefix(f, "s") {
			t.Errorf("Folder(%q) = %q: section keys must be prefixed with \"s\"", e.ID, f)
		}
		if prev, ok := seen[f]; ok {
			t.Errorf("IDs %q and %q share folder %q", prev, e.ID, f)
		}
		seen[f] = e.ID
	}
}

func TestLabels(t *testing.T) {
	for _, e := range All() {
		l := Label(e.ID)
		if l != "rule:"+e.ID {
			t.Errorf("Label(%q) = %q", e.ID, l)
		}
		if strings.ContainsAny(l, "&|!,()/") {
			t.Errorf("Label(%q) = %q contains a character Ginkgo forbids", e.ID, l)
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
			t.Errorf("Label(%q) = %q contains whitespace", e.ID, l)
		}
	}
}

func TestEnumsAndText(t *testing.T) {
	for _, e := range All() {
		switch e.Side {
		case Responder, Requester, Unknown:
		default:
			t.Errorf("%s: bad Side %q", e.ID, e.Side)
		}
		switch e.Level {
		case Mandatory, Optional:
		default:
			t.Errorf("%s: bad Level %q", e.ID, e.Level)
		}
		switch e.Status {
		case Paraphrased, SharedMeaning, TextUnavailable, SectionKeyed:
		default:
			t.Errorf("%s: bad Status %q", e.ID, e.Status)
		}
		if e.Section == "" {
			t.Errorf("%s: empty Section", e.ID)
		}
		if e.Summary == "" || strings.ContainsAny(e.Summary, "\n\r") {
			t.Errorf("%s: Summary must be one non-empty line", e.ID)
		}
		if e.Status != TextUnavailable && (e.Text == "" || strings.ContainsAny(e.Text, "\n\r")) {
			t.Errorf("%s: Text must be one non-empty paragraph", e.ID)
		}
		if n := strings.Count(e.Text, ". ") + 1; e.Text != "" && n > 4 {
			t.Errorf("%s: Text has about %d sentences, want at most 4", e.ID, n)
		}
		if e.Level == Optional && !strings.HasPrefix(e.ID, "o") {
			t.Errorf("%s: only o-numbered clauses are optional", e.ID)
		}
		if strings.HasPrefix(e.ID, "o") && e.Level != Optional {
			t.Errorf("%s: o-numbered clauses are optional", e.ID)
		}
	}
}

func TestTextUnavailable(t *testing.T) {
	want := []string{"C9-99", "C9-102", "C9-108", "C9-109", "C9-117", "C9-118", "C9-119", "C9-120", "C9-123", "C9-126"}
	var got []string
	for _, e := range All() {
		if e.Status != TextUnavailable {
			continue
		}
		got = append(got, e.ID)
		if e.Text != "" {
			t.Errorf("%s: text-unavailable entry has Text %q", e.ID, e.Text)
		}
		if len(e.Needs) != 0 {
			t.Errorf("%s: text-unavailable entry has Needs %v", e.ID, e.Needs)
		}
		if len(e.SharedWith) != 0 {
			t.Errorf("%s: text-unavailable entry has SharedWith %v", e.ID, e.SharedWith)
		}
		if !strings.HasPrefix(e.Summary, tuPrefix) {
			t.Errorf("%s: Summary %q must start with %q", e.ID, e.Summary, tuPrefix)
		}
		if e.Level != Mandatory {
			t.Errorf("%s: Level %q, want mandatory", e.ID, e.Level)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("text-unavailable IDs = %v, want %v", got, want)
	}
}

func TestSharedMeaningSymmetric(t *testing.T) {
	groups := [][]string{
		{"C9-97", "C9-98"},
		{"C9-100", "C9-112"},
		{"C9-104", "C9-110"},
		{"C9-106", "C9-115"},
		{"C9-111", "C9-121", "C9-125"},
		{"C9-114", "C9-122"},
	}
	inGroup := map[string]bool{}
	for _, g := range groups {
		for _, id := range g {
			inGroup[id] = true
			e, ok := Lookup(id)
			if !ok {
				t.Errorf("%s missing", id)
				continue
			}
			if e.Status != SharedMeaning {
				t.Errorf("%s: Status %q, want %q", id, e.Status, SharedMeaning)
			}
			var others []string
			for _, o := range g {
				if o != id {
					others = append(others, o)
				}
			}
			got := slices.Sorted(slices.Values(e.SharedWith))
			slices.Sort(others)
			if !slices.Equal(got, others) {
				t.Errorf("%s: SharedWith %v, want %v", id, e.SharedWith, others)
			}
		}
	}
	// General symmetry, and no stray shared-meaning entries.
	for _, e := range All() {
		if (e.Status == SharedMeaning) != (len(e.SharedWith) > 0) {
			t.Errorf("%s: Status %q with SharedWith %v", e.ID, e.Status, e.SharedWith)
		}
		if e.Status == SharedMeaning && !inGroup[e.ID] {
			t.Errorf("%s: shared-meaning entry outside the known groups", e.ID)
		}
		for _, o := range e.SharedWith {
			if o == e.ID {
				t.Errorf("%s: shares meaning with itself", e.ID)
			}
			oe, ok := Lookup(o)
			if !ok {
				t.Errorf("%s: SharedWith names unknown ID %q", e.ID, o)
				continue
			}
			if !slices.Contains(oe.SharedWith, e.ID) {
				t.Errorf("%s lists %s, but %s does not list %s", e.ID, o, o, e.ID)
			}
		}
	}
}

func TestNeeds(t *testing.T) {
	want := map[string][]string{
		"o9-58":     {NeedAtomics},
		"o9-66":     {NeedAtomics},
		"o9-67":     {NeedAtomics},
		"o9-95.2.2": {NeedSRQ},
	}
	for _, e := range All() {
		if !slices.Equal(e.Needs, want[e.ID]) {
			t.Errorf("%s: Needs %v, want %v", e.ID, e.Needs, want[e.ID])
		}
	}
}

func TestSectionKeyed(t *testing.T) {
	want := []string{"§9.7.5.1.5", "§9.7.5.2", "§9.7.7.2", "C9-140", "retry-counter", "rnr-retry", "go-back-n", "§9.7.5.1.2", "§9.9.2.2", "Table-58"}
	all := All()
	if len(all) < len(want) {
		t.Fatalf("catalogue has %d entries", len(all))
	}
	var got []string
	for _, e := range all[len(all)-len(want):] {
		got = append(got, e.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("tail of catalogue = %v, want %v", got, want)
	}
	for _, e := range all {
		if e.Status != SectionKeyed {
			continue
		}
		if clauseID.MatchString(e.ID) {
			t.Errorf("%s: a section-keyed rule must not carry a clause number", e.ID)
		}
		if e.Level != Mandatory {
			t.Errorf("%s: Level %q, want mandatory", e.ID, e.Level)
		}
	}
	c140, ok := Lookup("C9-140")
	if !ok || c140.Status != Paraphrased || c140.Side != Requester || c140.Section != "§9.7.6 (sub-section not confirmed)" {
		t.Errorf("C9-140 = %+v", c140)
	}
}

func TestAllAndLookupReturnCopies(t *testing.T) {
	a := All()
	a[0].ID = "mutated"
	for i := range a {
		if a[i].ID == "C9-97" {
			a[i].SharedWith[0] = "mutated"
		}
		if a[i].ID == "o9-58" {
			a[i].Needs[0] = "mutated"
		}
	}
	e, _ := Lookup("C9-97")
	e.SharedWith[0] = "mutated-too"
	b := All()
	if b[0].ID != "C9-95" {
		t.Errorf("All()[0].ID = %q after mutating a copy", b[0].ID)
	}
	if e, _ := Lookup("C9-97"); e.SharedWith[0] != "C9-98" {
		t.Errorf("C9-97 SharedWith = %v after mutating a copy", e.SharedWith)
	}
	if e, _ := Lookup("o9-58"); e.Needs[0] != NeedAtomics {
		t.Errorf("o9-58 Needs = %v after mutating a copy", e.Needs)
	}
	if _, ok := Lookup("C9-999"); ok {
		t.Error("Lookup of an unknown ID succeeded")
	}
	for _, e := range b {
		got, ok := Lookup(e.ID)
		if !ok || got.ID != e.ID || got.Text != e.Text {
			t.Errorf("Lookup(%q) = %+v, %v", e.ID, got, ok)
		}
	}
}

// TestClausesMatchTeamIndex cross-checks the catalogue's clause entries
// against the team paraphrase's index, when present: same IDs in the same
// order at the head of the catalogue, and the same section, side, level,
// status and shared-meaning group.
func TestClausesMatchTeamIndex(t *testing.T) {
	rows := parseIndex(t, readRules(t))
	all := All()
	if len(all) < len(rows) {
		t.Fatalf("catalogue has %d entries, index has %d", len(all), len(rows))
	}
	for i, r := range rows {
		e, ok := Lookup(r.id)
		if !ok {
			t.Errorf("index clause %s missing from the catalogue", r.id)
			continue
		}
		if all[i].ID != r.id {
			t.Errorf("catalogue position %d is %s, index has %s", i, all[i].ID, r.id)
		}
		if e.Section != r.section {
			t.Errorf("%s: Section %q, index says %q", r.id, e.Section, r.section)
		}
		wantSide := Unknown
		if strings.HasPrefix(r.binds, "responder") {
			wantSide = Responder
		} else if strings.HasPrefix(r.binds, "requester") {
			wantSide = Requester
		}
		if e.Side != wantSide {
			t.Errorf("%s: Side %q, index binds %q", r.id, e.Side, r.binds)
		}
		if string(e.Level) != r.level {
			t.Errorf("%s: Level %q, index says %q", r.id, e.Level, r.level)
		}
		var wantStatus Status
		var wantShared []string
		switch {
		case strings.Contains(r.status, "text not public"):
			wantStatus = TextUnavailable
		case strings.HasPrefix(r.status, "shared meaning with "):
			wantStatus = SharedMeaning
			for _, s := range strings.Split(strings.TrimPrefix(r.status, "shared meaning with "), ",") {
				wantShared = append(wantShared, strings.TrimSpace(s))
			}
		case r.status == "paraphrased":
			wantStatus = Paraphrased
		default:
			t.Errorf("%s: unrecognised index status %q", r.id, r.status)
			continue
		}
		if e.Status != wantStatus {
			t.Errorf("%s: Status %q, index says %q", r.id, e.Status, r.status)
		}
		slices.Sort(wantShared)
		if got := slices.Sorted(slices.Values(e.SharedWith)); !slices.Equal(got, wantShared) {
			t.Errorf("%s: SharedWith %v, index says %v", r.id, e.SharedWith, wantShared)
		}
	}
}

// TestNoUnlistedClauseNumbers checks that every catalogue ID shaped like a
// clause number has its own entry in the team's paraphrase, when present
// (a "### ID:" heading), so no clause number is invented.
func TestNoUnlistedClauseNumbers(t *testing.T) {
	lines := readRules(t)
	listed := map[string]bool{}
	for _, r := range parseIndex(t, lines) {
		listed[r.id] = true
	}
	heading := regexp.MustCompile(`^### ([Co]\d+-\d+(?:\.[0-9a-z]+)*):`)
	for _, l := range lines {
		if m := heading.FindStringSubmatch(l); m != nil {
			listed[m[1]] = true
		}
	}
	n := 0
	for _, e := range All() {
		if !clauseID.MatchString(e.ID) {
			if strings.HasPrefix(e.ID, "C") || strings.HasPrefix(e.ID, "o") {
				t.Errorf("%s: looks like a clause number but is malformed", e.ID)
			}
			continue
		}
		n++
		if !listed[e.ID] {
			t.Errorf("%s is not listed in %s", e.ID, rulesPath)
		}
	}
	if n == 0 {
		t.Error("no clause numbers found in the catalogue")
	}
}
