package migrate_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/contiv/netplugin/objdb/objdbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, objdbtest.LeakOptions()...) }
