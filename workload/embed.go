package workload

import (
	"bytes"
	_ "embed"
	"slices"
	"sync"
)

// catalogGz is the committed catalogue, built into every binary so that
// experiments can pick tiles by cost and verify answers anywhere.
//
//go:embed testdata/tiles.csv.gz
var catalogGz []byte

var defaultCatalog = sync.OnceValues(func() (*Catalog, error) {
	return ReadCatalog(bytes.NewReader(catalogGz))
})

// DefaultCatalog returns the catalogue built into the binary. Each call returns
// its own copy, which the caller may change.
func DefaultCatalog() (*Catalog, error) {
	c, err := defaultCatalog()
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Tiles = slices.Clone(c.Tiles)
	return &cp, nil
}
