// Package ingesttest builds the files tests upload: .xlsx workbooks.
package ingesttest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// XLSX is a workbook of one sheet ("Sheet1") holding rows.
func XLSX(t testing.TB, rows [][]any) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for r, row := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, r+1)
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// XLSXOfCSV is XLSX of a simple CSV (no quotes): a line a row, a comma
// between cells, every cell text.
func XLSXOfCSV(t testing.TB, csv string) []byte {
	t.Helper()
	var rows [][]any
	for _, line := range strings.Split(strings.TrimSuffix(csv, "\n"), "\n") {
		row := []any{}
		for _, c := range strings.Split(line, ",") {
			row = append(row, c)
		}
		rows = append(rows, row)
	}
	return XLSX(t, rows)
}
