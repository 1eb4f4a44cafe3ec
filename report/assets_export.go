package report

// Assets returns the report's style sheet and script, for pages made of its
// charts elsewhere (advise --html).
func Assets() (css, script string) { return pageCSS(), js }

func pageCSS() string { return css }
