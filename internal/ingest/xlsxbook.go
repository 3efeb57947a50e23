package ingest

import (
	"archive/zip"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"strings"
)

// xlsxBook is what a workbook says of its sheets: their names in order and
// where each one's cells are, and where its shared strings are.
type xlsxBook struct {
	sheets []xlsxSheet
	sst    string // the part of the shared strings; "" for none
}

// xlsxSheet is a sheet of a workbook; part is "" when its relationship
// names no worksheet part of the zip (a chart sheet, a broken link).
type xlsxSheet struct {
	name, part string
}

// The relationship types a workbook's list needs (transitional and strict
// OOXML end alike).
const (
	relOfficeDocument = "/officeDocument"
	relWorksheet      = "/worksheet"
	relSharedStrings  = "/sharedStrings"
)

// readBook reads the package's relationships, the workbook and the
// workbook's relationships, as streams: only the sheets' names and the
// relationships are kept.
func readBook(parts xlsxParts, lim Limits) (xlsxBook, error) {
	wb := "xl/workbook.xml"
	if zf := parts["_rels/.rels"]; zf != nil {
		rels, err := readRels(zf, "", lim)
		if err != nil {
			return xlsxBook{}, err
		}
		for _, r := range rels {
			if strings.HasSuffix(r.typ, relOfficeDocument) && parts[r.target] != nil {
				wb = r.target
				break
			}
		}
	}
	wbf := parts[wb]
	if wbf == nil {
		return xlsxBook{}, &Error{Code: CodeMalformedXLSX, Message: "the upload is not an .xlsx workbook that can be read",
			Details: []FieldError{{Message: "the zip holds no workbook (xl/workbook.xml): an old .xls, an .ods? save it as .xlsx or CSV"}}}
	}
	var rels []xlsxRel
	if zf := parts[path.Join(path.Dir(wb), "_rels", path.Base(wb)+".rels")]; zf != nil {
		var err error
		if rels, err = readRels(zf, path.Dir(wb), lim); err != nil {
			return xlsxBook{}, err
		}
	}
	var book xlsxBook
	byID := make(map[string]xlsxRel, len(rels))
	for _, r := range rels {
		byID[r.id] = r
		if strings.HasSuffix(r.typ, relSharedStrings) && book.sst == "" && parts[r.target] != nil {
			book.sst = r.target
		}
	}
	if book.sst == "" && parts["xl/sharedstrings.xml"] != nil {
		book.sst = "xl/sharedstrings.xml" // where most readers look, related or not
	}
	err := eachElement(wbf, lim, func(e xml.StartElement) {
		if e.Name.Local != "sheet" {
			return
		}
		s := xlsxSheet{name: attr(e, "name", false)}
		if r, ok := byID[attr(e, "id", true)]; ok && strings.HasSuffix(r.typ, relWorksheet) && parts[r.target] != nil {
			s.part = r.target
		}
		book.sheets = append(book.sheets, s)
	})
	return book, err
}

// xlsxRel is a relationship, its target resolved to a part's name.
type xlsxRel struct {
	id, typ, target string
}

// readRels reads a relationships part; targets are resolved against dir
// (an absolute one against the package's root). External targets are left
// out.
func readRels(zf *zip.File, dir string, lim Limits) ([]xlsxRel, error) {
	var rels []xlsxRel
	err := eachElement(zf, lim, func(e xml.StartElement) {
		if e.Name.Local != "Relationship" || attr(e, "TargetMode", false) == "External" {
			return
		}
		t := strings.ReplaceAll(attr(e, "Target", false), "\\", "/")
		if !strings.HasPrefix(t, "/") {
			t = path.Join(dir, t)
		}
		rels = append(rels, xlsxRel{id: attr(e, "Id", false), typ: attr(e, "Type", false), target: partName(path.Clean("/" + t))})
	})
	return rels, err
}

// eachElement streams a list part (at most xlsxMaxPart) to fn, one start
// tag at a time.
func eachElement(zf *zip.File, lim Limits, fn func(xml.StartElement)) error {
	if zf.UncompressedSize64 > xlsxMaxPart {
		return tooLarge("the part %s of the workbook unzips to %s; at most %s is read: it is not a workbook of a list",
			clip(zf.Name), sizeString(int64(min(zf.UncompressedSize64, 1<<62))), sizeString(xlsxMaxPart))
	}
	rc, err := openPart(zf, 0, lim)
	if err != nil {
		return err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return partError(zf, err)
		}
		if e, ok := tok.(xml.StartElement); ok {
			fn(e)
		}
	}
}

// partError is err of reading the part zf: a refusal of openPart's as it
// is, else the XML that cannot be read.
func partError(zf *zip.File, err error) error {
	if e, ok := asError(err); ok {
		return e
	}
	return &Error{Code: CodeMalformedXLSX, Message: "the workbook cannot be read", Details: []FieldError{{
		Message: clip(fmt.Sprintf("the part %s: %v", zf.Name, err))}}}
}

// attr is the value of e's attribute name, with a name space prefix or
// without (a relationship id is "r:id", beside the sheet's "sheetId"); ""
// when e has none.
func attr(e xml.StartElement, name string, prefixed bool) string {
	for _, a := range e.Attr {
		if a.Name.Local == name && (a.Name.Space != "") == prefixed {
			return a.Value
		}
	}
	return ""
}
