package manifest

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// UID is the numeric user (and group) every container runs as: distroless's
// "nonroot", which the image sets too.
const UID = 65532

// OptionError is an unusable rendering option. Option names the option as
// the caller gave it ("namespace", "image", "run ID", "port"); the CLI says
// which flag carried it.
type OptionError struct {
	Option string
	Msg    string
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Msg }

// Image references as the distribution/reference grammar writes them:
// [host[:port]/]path[:tag][@digest], lowercase path components.
var imageRef = func() *regexp.Regexp {
	const (
		alnum     = `[a-z0-9]+`
		separator = `(?:[._]|__|[-]+)`
		component = alnum + `(?:` + separator + alnum + `)*`
		hostPart  = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host      = `(?:` + hostPart + `(?:\.` + hostPart + `)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
		path      = component + `(?:/` + component + `)*`
		tag       = `[\w][\w.-]{0,127}`
		digest    = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(?:` + host + `/)?` + path + `(?::` + tag + `)?(?:@` + digest + `)?$`)
}()

// CheckImage reports whether ref is an image reference a kubelet can pull
// (registry.example:5000/team/throttlelab:v1, throttlelab@sha256:...); the
// error is an *OptionError naming "image".
func CheckImage(ref string) error {
	if ref == "" {
		return &OptionError{"image", "missing: give the throttlelab image the cluster pulls"}
	}
	name, _, _ := strings.Cut(ref, "@")
	if len(name) > 255 || !imageRef.MatchString(ref) {
		return &OptionError{"image", fmt.Sprintf("%q is not an image reference: want [REGISTRY[:PORT]/]NAME[:TAG][@DIGEST], with a lowercase name", ref)}
	}
	return nil
}

// Container runs the image with args, as the restricted Pod Security
// Standard wants it: no privilege escalation, no capabilities, a read-only
// root file system (/tmp is an emptyDir named "tmp", which the pod must
// provide).
func Container(name, image string, res corev1.ResourceRequirements, args ...string) corev1.Container {
	f := false
	t := true
	return corev1.Container{
		Name: name, Image: image, Args: args, Resources: res,
		ImagePullPolicy: corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &f,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   &t,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
	}
}
