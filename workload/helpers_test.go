package workload

import (
	"encoding/hex"
	"fmt"
)

func fmtSscanf(s, format string, args ...any) (int, error) { return fmt.Sscanf(s, format, args...) }

func hexString(b []byte) string { return hex.EncodeToString(b) }
