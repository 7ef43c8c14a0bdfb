package endpoints

import (
	"fmt"
	"testing"

	"github.com/contiv/netplugin/state"
)

// The record cache keeps at most maxCachedRecords, takes an entry out
// once, and ignores unknown versions.
func TestRecordCache(t *testing.T) {
	var c recordCache
	c.put(state.Endpoint{Common: state.Common{ID: "zero"}}, 0)
	if _, ok := c.take("zero"); ok {
		t.Fatal("a record of unknown version was cached")
	}
	for i := 0; i < maxCachedRecords+10; i++ {
		c.put(state.Endpoint{Common: state.Common{ID: fmt.Sprint(i)}}, int64(i+1))
	}
	if n := len(c.recs); n != maxCachedRecords {
		t.Fatalf("%d records cached, want %d", n, maxCachedRecords)
	}
	last := fmt.Sprint(maxCachedRecords + 9)
	r, ok := c.take(last)
	if !ok || r.ver != maxCachedRecords+10 {
		t.Fatalf("newest record: %+v %t", r, ok)
	}
	if _, ok := c.take(last); ok {
		t.Fatal("a record was taken twice")
	}
}
