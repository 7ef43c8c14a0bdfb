package dial

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/contiv/netplugin/objdb"
)

func TestOpenRejectsAmbiguousOrMalformed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cases := []Config{
		{EtcdEndpoints: []string{"http://127.0.0.1:2379"}, ConsulEndpoints: []string{"127.0.0.1:8500"}},
		{EtcdEndpoints: []string{"127.0.0.1:2379"}},
		{EtcdEndpoints: []string{"http://127.0.0.1:2379,ftp://x:1"}},
		{ConsulEndpoints: []string{"127.0.0.1:notaport"}},
	}
	for _, c := range cases {
		st, err := Open(ctx, c)
		if err == nil {
			st.Close()
			t.Errorf("%+v: want an error", c)
			continue
		}
		if !errors.Is(err, objdb.ErrInvalid) {
			t.Errorf("%+v: want ErrInvalid, got %v", c, err)
		}
	}
}

func TestNonEmpty(t *testing.T) {
	got := nonEmpty([]string{"", "a, b", ",", "c"})
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("%q", got)
	}
}
