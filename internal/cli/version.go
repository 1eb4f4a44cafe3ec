package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
)

// ImageRepository is where the released images are pushed (make release
// writes them, docs/install.md pushes them): the default image of the
// Kubernetes manifests is ImageRepository:Version.
const ImageRepository = "ghcr.io/throttlelab/throttlelab"

// releaseRE is a release version: v, then MAJOR.MINOR.PATCH, an optional
// pre-release (v0.3.0, v1.0.0-rc.1); git describe gives that on a tagged
// commit and anything else (a commit, -dirty) between tags.
var releaseRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// IsRelease says whether v is a release version (v0.3.0, v1.0.0-rc.1).
func IsRelease(v string) bool { return releaseRE.MatchString(v) }

// defaultImage is the image the rendered manifests run unless --image says
// otherwise: this build's version in ImageRepository.
func defaultImage() string { return ImageRepository + ":" + Version }

// devImageNote is what a development build says about its default image,
// or "" for a release.
func devImageNote() string {
	if IsRelease(Version) {
		return ""
	}
	return fmt.Sprintf("a development build (version %s), not a release: the default image %s is in no registry; give --image (make image or make release builds one)", Version, defaultImage())
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print throttlelab's version",
		Example: `  throttlelab version`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			kind := "release"
			if !IsRelease(Version) {
				kind = "development build, not a release"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "throttlelab %s (%s; %s %s/%s; image %s)\n", Version, kind, runtime.Version(), runtime.GOOS, runtime.GOARCH, defaultImage())
			return err
		},
	}
}

// displayName is the name the command line goes by, from how it was run:
// installed (or linked) as kubectl-throttlelab, kubectl runs it as the
// plugin "kubectl throttlelab", which its usage lines then show.
func displayName(argv0 string) string {
	base := filepath.Base(argv0)
	if rest, ok := strings.CutPrefix(base, "kubectl-"); ok && rest != "" {
		// kubectl's plugin naming: kubectl-a_b is "kubectl a-b".
		return "kubectl " + strings.ReplaceAll(rest, "_", "-")
	}
	return "throttlelab"
}
