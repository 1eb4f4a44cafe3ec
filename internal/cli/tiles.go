package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throttlelab/throttlelab/internal/progress"
	"github.com/throttlelab/throttlelab/record"
	"github.com/throttlelab/throttlelab/workload"
)

func newTilesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tiles",
		Short: "Build, verify and describe the Mandelbrot tile catalogue",
		Example: `  throttlelab tiles stats
  throttlelab tiles verify --sample 20`,
	}
	groupCmd(cmd)
	cmd.AddCommand(newTilesCatalogCmd(), newTilesVerifyCmd(), newTilesStatsCmd())
	return cmd
}

type tilesCatalogFlags struct {
	out     string
	workers int
}

func newTilesCatalogCmd() *cobra.Command {
	var f tilesCatalogFlags
	cmd := &cobra.Command{
		Use:     "catalog",
		Short:   "Render all 26010 tiles and write the catalogue (tens of CPU minutes)",
		Example: `  throttlelab tiles catalog --out /tmp/tiles.csv.gz`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.workers < 0 {
				return usagef("--workers %d: must be 0 (all CPUs) or more", f.workers)
			}
			bar := progress.New(cmd.ErrOrStderr(), "tiles", workload.TileCount)
			start := time.Now()
			c, err := workload.BuildCatalog(cmd.Context(), f.workers, bar.Set)
			if err != nil {
				return fmt.Errorf("building the catalogue: %w", err)
			}
			bar.Finish()
			if err := writeFileAtomic(f.out, func(w *os.File) error { return workload.WriteCatalog(w, c) }); err != nil {
				return err
			}
			sum := c.Checksum()
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d tiles in %s, image sha256 %x\n", f.out, len(c.Tiles), time.Since(start).Round(time.Second), sum)
			return nil
		},
	}
	cmd.Flags().StringVarP(&f.out, "out", "o", "workload/testdata/tiles.csv.gz", "file to write")
	cmd.Flags().IntVar(&f.workers, "workers", 0, "parallel renderers (0: all CPUs)")
	return cmd
}

// writeFileAtomic writes path through a temporary file in the same directory, so a
// crash never leaves a half-written file behind.
func writeFileAtomic(path string, write func(*os.File) error) error {
	return record.WriteFileAtomic(path, write)
}

// loadCatalog reads the catalogue from path, or the one built into the binary if
// path is empty.
func loadCatalog(path string) (*workload.Catalog, error) {
	if path == "" {
		return workload.DefaultCatalog()
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, usagef("--catalog: %v", err)
	}
	defer fh.Close()
	c, err := workload.ReadCatalog(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

type tilesVerifyFlags struct {
	tiles   []string
	sample  int
	seed    uint64
	catalog string
	workers int
}

func newTilesVerifyCmd() *cobra.Command {
	var f tilesVerifyFlags
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Recompute tiles and check them against the catalogue",
		Example: `  throttlelab tiles verify --sample 20
  throttlelab tiles verify --tile 85,76`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.sample < 0 || f.sample > workload.TileCount {
				return usagef("--sample %d: must be 0..%d", f.sample, workload.TileCount)
			}
			var tiles []workload.Tile
			for _, s := range f.tiles {
				t, err := parseTile(s)
				if err != nil {
					return usagef("--tile %q: %v", s, err)
				}
				tiles = append(tiles, t)
			}
			if len(tiles) == 0 && f.sample == 0 {
				return usagef("--sample 0 and no --tile: nothing to verify")
			}
			c, err := loadCatalog(f.catalog)
			if err != nil {
				return err
			}
			tiles = append(tiles, workload.SampleTiles(rand.New(rand.NewPCG(f.seed, 0)), f.sample)...)
			bar := progress.New(cmd.ErrOrStderr(), "verify", len(tiles))
			got, err := workload.RenderTiles(cmd.Context(), tiles, f.workers, bar.Set)
			if err != nil {
				return err
			}
			bar.Finish()
			bad := workload.Compare(c, got)
			out := cmd.OutOrStdout()
			for _, m := range bad {
				fmt.Fprintln(out, "MISMATCH", m)
			}
			if len(bad) > 0 {
				return fmt.Errorf("%d of %d tiles differ from the catalogue", len(bad), len(got))
			}
			fmt.Fprintf(out, "ok: %d tiles (seed %d) match the catalogue (kernel %s, max_iter %d)\n", len(got), f.seed, c.Kernel, c.MaxIter)
			return nil
		},
	}
	cmd.Flags().IntVar(&f.sample, "sample", 50, "number of random tiles to recompute")
	cmd.Flags().StringArrayVar(&f.tiles, "tile", nil, "also verify tile X,Y (repeatable)")
	cmd.Flags().Uint64Var(&f.seed, "seed", uint64(time.Now().UnixNano()), "random seed for the sample (default: the time)")
	cmd.Flags().StringVar(&f.catalog, "catalog", "", "catalogue file (default: the one built in)")
	cmd.Flags().IntVar(&f.workers, "workers", 0, "parallel renderers (0: all CPUs)")
	return cmd
}

// parseTile parses "X,Y" tile indices.
func parseTile(s string) (workload.Tile, error) {
	xs, ys, ok := strings.Cut(s, ",")
	if !ok {
		return workload.Tile{}, fmt.Errorf("want X,Y")
	}
	x, err1 := strconv.Atoi(strings.TrimSpace(xs))
	y, err2 := strconv.Atoi(strings.TrimSpace(ys))
	if err1 != nil || err2 != nil {
		return workload.Tile{}, fmt.Errorf("want integer X,Y")
	}
	t := workload.Tile{X: x, Y: y}
	return t, workload.CheckTile(t)
}
