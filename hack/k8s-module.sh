# Sourced by hack/k8s-binaries.sh and hack/k8s-node-binaries.sh: the pinned
# Kubernetes version, and a scratch Go module that can build its commands.
#
# k8s.io/kubernetes cannot be required as it is, because its go.mod points
# each staging module (k8s.io/api, apimachinery, client-go, ...) at
# ./staging; k8s_module replaces each with its published version.

K8S_VERSION=v1.37.0
STAGING_VERSION=v0.37.0 # the staging modules published with K8S_VERSION
# K8S_LDFLAGS stamp the binaries with their version, as Kubernetes' own build does.
v=k8s.io/component-base/version
K8S_LDFLAGS="-s -w -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"

# k8s_module NAME: in the current (empty) directory, a module named NAME
# requiring k8s.io/kubernetes at K8S_VERSION with every staging module
# replaced by its published version. WHO prefixes the error messages.
k8s_module() {
	go mod init "throttlelab.local/$1" >/dev/null 2>&1
	gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	if [ -z "$gomod" ]; then
		echo "$WHO: could not download k8s.io/kubernetes@$K8S_VERSION from the module proxy" >&2
		return 1
	fi
	# Every "k8s.io/x => ./staging/src/k8s.io/x" of kubernetes' go.mod.
	staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$gomod")
	if [ -z "$staging" ]; then
		echo "$WHO: no staging replacements found in $gomod" >&2
		return 1
	fi
	go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
	for m in $staging; do
		go mod edit -replace="$m=$m@$STAGING_VERSION"
	done
}
