package contivmodel_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/contivmodel/modeltest"
	"github.com/contiv/netplugin/objdb"
	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, modeltest.LeakOptions()...) }

// storeFunc returns an empty store for one (sub)test.
type storeFunc func(t *testing.T) objdb.KV

// storeTests need a store; they run against a real embedded etcd and
// against the in-memory fake.
var storeTests = []struct {
	name string
	fn   func(t *testing.T, newStore storeFunc)
}{
	{"ValidationRefusals", testValidationRefusals},
	{"ValidationOrder", testValidationOrder},
	{"ValidationDefaults", testValidationDefaults},
	{"ValidationAccepts", testValidationAccepts},
	{"CRUDEveryType", testCRUDEveryType},
	{"ListSortedByKey", testListSortedByKey},
	{"Decoding", testDecoding},
	{"HTMLEscaping", testHTMLEscaping},
	{"NoControllerTypes", testNoControllerTypes},
	{"Inspect", testInspect},
	{"PathRules", testPathRules},
	{"CallbacksLinkObjects", testCallbacksLinkObjects},
	{"CascadeDelete", testCascadeDelete},
	{"ProgrammaticAPI", testProgrammaticAPI},
	{"ConcurrentLinking", testConcurrentLinking},
	{"PersistenceAcrossRegistries", testPersistenceAcrossRegistries},
	{"LoadNormalises", testLoadNormalises},
}

// TestEtcd runs the store tests on one embedded etcd, each (sub)test under
// its own key root.
func TestEtcd(t *testing.T) {
	srv := objdbtest.StartEmbeddedEtcd(t)
	newStore := func(t *testing.T) objdb.KV { return modeltest.EtcdStore(t, srv) }
	for _, st := range storeTests {
		t.Run(st.name, func(t *testing.T) { st.fn(t, newStore) })
	}
}

// TestMemKV runs the store tests on the in-memory fake.
func TestMemKV(t *testing.T) {
	newStore := func(*testing.T) objdb.KV { return modeltest.NewMemKV() }
	for _, st := range storeTests {
		t.Run(st.name, func(t *testing.T) { st.fn(t, newStore) })
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dump(t *testing.T, kv objdb.KV) map[string]string {
	t.Helper()
	d, err := modeltest.Dump(testCtx(t), kv)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
