// Package version holds the build's version, commit and build time. The
// three values are stamped by the linker at every build (scripts/version.sh
// prints the -ldflags; the Makefile, scripts/quickstart.sh and the test
// bed's builder use it), and read here by the daemons' --version, netctl
// and netmaster's /version (docs/operations.md). A build without the
// stamp (plain "go build" or "go install") reports what the Go toolchain
// recorded in the binary instead.
package version

import "runtime/debug"

// Set with -ldflags "-X github.com/contiv/netplugin/utils/version.Version=…"
// (and GitCommit, BuildTime).
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

// Get returns the stamped values; fields the linker did not stamp come
// from the Go build information (FromBuildInfo).
func Get() Info {
	i := Info{Version: Version, GitCommit: GitCommit, BuildTime: BuildTime}
	if i.Stamped() && i.BuildTime != "" {
		return i
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	return FromBuildInfo(i, bi)
}

// FromBuildInfo fills the empty fields of i from the build information
// the Go toolchain embeds: the main module's version (a release tag for
// "go install …@vX", a pseudo-version for a build in a git checkout),
// the VCS revision with "-dirty" appended for modified sources (as
// scripts/version.sh does) and, in place of the build time, the time of
// that revision. What the toolchain did not record stays empty.
func FromBuildInfo(i Info, bi *debug.BuildInfo) Info {
	if bi == nil {
		return i
	}
	if i.Version == "" && bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if i.GitCommit == "" && rev != "" {
		i.GitCommit = rev
		if dirty {
			i.GitCommit += "-dirty"
		}
	}
	if i.BuildTime == "" {
		i.BuildTime = at
	}
	return i
}

// Stamped reports whether the build was stamped with a version and commit.
func (i Info) Stamped() bool { return i.Version != "" && i.GitCommit != "" }

// Lines is the daemons' --version text: three "Label: value" lines.
func (i Info) Lines() string {
	return "Version: " + i.Version + "\nGitCommit: " + i.GitCommit + "\nBuildTime: " + i.BuildTime + "\n"
}
