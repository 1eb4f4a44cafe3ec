package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ReadTargets reads a targets file: one base URL per line; blank lines and
// lines starting with # are left out.
func ReadTargets(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// CleanTargets checks that each target is a base URL (http or https, a
// host, no query) and returns them without trailing slashes.
func CleanTargets(targets []string) ([]string, error) {
	if len(targets) == 0 {
		return nil, errors.New("no targets")
	}
	out := make([]string, len(targets))
	for i, t := range targets {
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("target %q: want a base URL such as http://127.0.0.1:8080", t)
		}
		out[i] = strings.TrimRight(t, "/")
	}
	return out, nil
}

// CheckTargets asks each target's /healthz (3 s each) and says which one
// is unreachable or is no throttlelab serve instance.
func CheckTargets(ctx context.Context, targets []string) error {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil}}
	for _, t := range targets {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("target %s: %w", t, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Errorf("target %s is unreachable: %w", t, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("target %s: /healthz answered %s: is it a throttlelab serve instance?", t, resp.Status)
		}
	}
	return nil
}
