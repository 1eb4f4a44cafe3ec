// Command standin is the small executable TestAssemble packs as a release
// binary: an ELF with Go build information that links go-containerregistry,
// so the SBOM has a module to name, without the minutes a race-built test
// executable of 50 MB takes to compress.
package main

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	ref, err := name.ParseReference("example.com/throttlelab:v1.2.3")
	fmt.Println(ref, err)
}
