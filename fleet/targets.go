package fleet

import (
	"encoding/json"
	"fmt"
)

// target is one active scrape target of Prometheus' /api/v1/targets.
type target struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
}

func parseTargets(data []byte) ([]target, error) {
	var v struct {
		ActiveTargets []target `json:"activeTargets"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("reading Prometheus' targets: %w", err)
	}
	return v.ActiveTargets, nil
}
