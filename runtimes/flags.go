package runtimes

// The flags of the runtimes read here, not throttlelab's: the command
// lines this package parses are other programs' (java, Envoy, gunicorn,
// uvicorn), and these names are theirs. They live in this one file so that
// archtest's check that libraries name no flags can list it among the
// files whose strings are other programs' command lines.
const (
	envoyConcurrency = "--concurrency" // Envoy's worker threads
	serverWorkers    = "--workers"     // gunicorn's and uvicorn's worker processes
	gunicornWorkers  = "-w"            // gunicorn's short form
	javaModule       = "--module"      // java: what follows is the program's
)

// javaOptionsWithValue are java launcher options whose value is the next
// argument, not an option or the main class.
var javaOptionsWithValue = map[string]bool{
	"-cp": true, "-classpath": true, "--class-path": true, "-p": true, "--module-path": true,
	"--add-modules": true, "--add-opens": true, "--add-exports": true, "--add-reads": true,
	"--upgrade-module-path": true, "--limit-modules": true, "--patch-module": true,
	"--enable-native-access": true,
}
