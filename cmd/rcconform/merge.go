package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rcconform/rcconform/reports"
)

// readResult reads one saved JSON result.
func readResult(path string) (*reports.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	defer f.Close()
	res, err := reports.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return res, nil
}

// mergeResults reads and merges the results at paths (report --merge)
// and writes the merged JSON to out: a file, or standard output when out
// is "-", or when out is "" and toStdout (no other output was asked for).
func mergeResults(paths []string, out string, toStdout bool, stdout io.Writer) (*reports.Result, error) {
	if len(paths) == 0 {
		return nil, errors.New("--merge needs the JSON results to merge as arguments")
	}
	var results []*reports.Result
	for _, p := range paths {
		r, err := readResult(p)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	merged, err := reports.Merge(results)
	if err != nil {
		return nil, err
	}
	if out == "" && !toStdout {
		return merged, nil
	}
	var buf bytes.Buffer
	if err := merged.WriteJSON(&buf); err != nil {
		return nil, err
	}
	if err := writeOut(out, stdout, buf.Bytes()); err != nil {
		return nil, err
	}
	return merged, nil
}
