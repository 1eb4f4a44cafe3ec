// Package manifest holds what every manifest throttlelab renders shares: the
// restricted container every pod runs, the user it runs as, the check of an
// image reference, the error for an unusable rendering option, and the
// deterministic YAML stream the objects are written as. The experiment
// backend (package k8s) and the agent's manifests (package
// k8s/agentmanifest) both import it, and neither imports the other.
//
//	if err := manifest.CheckImage(image); err != nil {
//		return err // a *manifest.OptionError naming "image"
//	}
//	c := manifest.Container("agent", image, resources, "agent", "--listen", ":9101")
//	err := manifest.WriteDocuments(os.Stdout, "# header\n", objs)
package manifest
