package workload

import "errors"

// DefaultCatalog is a placeholder until the catalogue exists.
func DefaultCatalog() (*Catalog, error) { return nil, errors.New("no catalogue yet") }
