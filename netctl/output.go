package netctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table is the column writer of every listing (docs/netctl.md §5.1): Go tabwriter
// with minwidth 0, padding 2, space padding. Cells are TAB-terminated; a
// line's last cell is written without padding.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, tabwidth int) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, tabwidth, 2, ' ', 0)}
}

// line writes cells joined by TABs and a newline.
func (t *table) line(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.tw, strings.Join(parts, "\t"))
}

// raw writes text as is (used for TAB-terminated rows and plain lines).
func (t *table) raw(s string) { fmt.Fprint(t.tw, s) }

func (t *table) flush() { _ = t.tw.Flush() }

// writeJSON prints v as indented JSON plus a newline (docs/netctl.md §5.3).
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fail(exitIO, err.Error())
	}
	_, _ = w.Write(append(b, '\n'))
	return nil
}

// writeNames prints one name per line (quiet output, docs/netctl.md §5.2).
func writeNames[T any](w io.Writer, objs []*T, name func(*T) string) {
	for _, o := range objs {
		fmt.Fprintln(w, name(o))
	}
}

// listing holds the shared listing options.
type listing struct {
	json, quiet bool
}

// emit prints objs as JSON (-j wins over -q), as names (-q) or through
// the table function.
func emit[T any](w io.Writer, l listing, objs []*T, name func(*T) string, tableFn func([]*T)) error {
	if objs == nil {
		objs = []*T{}
	}
	switch {
	case l.json:
		return writeJSON(w, objs)
	case l.quiet && name != nil:
		writeNames(w, objs, name)
	default:
		tableFn(objs)
	}
	return nil
}

// slist prints a string list as Go's %v does: [a b c].
func slist(s []string) string { return fmt.Sprint(s) }
