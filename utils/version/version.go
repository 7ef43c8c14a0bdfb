// Package version holds the build's version, commit and build time. The
// three values are stamped by the linker at every build (scripts/version.sh
// prints the -ldflags; the Makefile, scripts/quickstart.sh and the test
// bed's builder use it), and read here by the daemons' --version, netctl
// and netmaster's /version (docs/operations.md).
package version

// Set with -ldflags "-X github.com/contiv/netplugin/utils/version.Version=…"
// (and GitCommit, BuildTime). An unstamped build (plain "go build") leaves
// them empty, as the original's did.
var (
	Version   string
	GitCommit string
	BuildTime string
)

// Info is one build's identity. The JSON member names are the original's
// /version body.
type Info struct {
	GitCommit string `json:"GitCommit"`
	Version   string `json:"Version"`
	BuildTime string `json:"BuildTime"`
}

// Get returns the stamped values.
func Get() Info {
	return Info{Version: Version, GitCommit: GitCommit, BuildTime: BuildTime}
}

// Stamped reports whether the build was stamped with a version and commit.
func (i Info) Stamped() bool { return i.Version != "" && i.GitCommit != "" }

// Lines is the daemons' --version text: three "Label: value" lines.
func (i Info) Lines() string {
	return "Version: " + i.Version + "\nGitCommit: " + i.GitCommit + "\nBuildTime: " + i.BuildTime + "\n"
}
