package agent

import (
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/schemas/schematest"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

// TestAgentSchemas holds the agent's real /advice and /evaluate, from its
// HTTP handler on every fake tree, to their JSON Schemas
// (schemas/agentadvice.json, schemas/evaluation.json).
func TestAgentSchemas(t *testing.T) {
	for _, tree := range watchtest.Trees {
		t.Run(tree, func(t *testing.T) {
			n := newFakeNode(t, tree, nil)
			n.run(8 * time.Second)
			h := n.a.Handler()
			code, body := get(t, h, "/advice")
			if code != 200 {
				t.Fatalf("/advice: %d %s", code, body)
			}
			schematest.Check(t, tree+" /advice", []byte(body))
			doc := adviceOf(t, h)
			if doc.APIVersion == "" || doc.Kind != "AgentAdvice" || len(doc.Containers) == 0 {
				t.Fatalf("/advice: apiVersion %q kind %q, %d containers", doc.APIVersion, doc.Kind, len(doc.Containers))
			}
			c := doc.Containers[0]
			if c.Advice == nil { // the schema of a nested advice is held too
				t.Fatalf("/advice: no advice yet for %s/%s/%s: %s", c.Namespace, c.Pod, c.Container, c.Why)
			}
			code, body = get(t, h, "/evaluate?namespace="+c.Namespace+"&pod="+c.Pod+"&container="+c.Container+"&limit=300m&burst=100m")
			if code != 200 {
				t.Fatalf("/evaluate: %d %s", code, body)
			}
			schematest.Check(t, tree+" /evaluate", []byte(body))
		})
	}
}
