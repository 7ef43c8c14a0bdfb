package testbed

import (
	"os"
	"testing"
)

// TestContivImagesArchive builds (or finds cached) the archive of
// scripts/build-images.sh that KubeClusterOptions.ContivFromManifests
// imports, so that the build — minutes of CPU — need not happen inside
// a locked network test. It runs only when CONTIV_TESTBED_BUILD_IMAGES=1:
//
//	CONTIV_TESTBED_BUILD_IMAGES=1 go test ./test/testbed -run TestContivImagesArchive -v
func TestContivImagesArchive(t *testing.T) {
	if os.Getenv("CONTIV_TESTBED_BUILD_IMAGES") != "1" {
		t.Skip("set CONTIV_TESTBED_BUILD_IMAGES=1 to build contiv's images into the cache")
	}
	p, err := ContivImagesArchive(t)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("contiv images: %s", p)
}
