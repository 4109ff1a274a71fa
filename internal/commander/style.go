package commander

// Style holds the ANSI sequences renderers use. A nil *Style, or the one
// NewStyle(false) returns, renders plain text; the REPL decides which (a
// terminal, NO_COLOR unset).
type Style struct {
	Bold, Dim, Underline                           string
	Red, Green, Yellow, Blue, Magenta, Cyan, Reset string
}

// NewStyle returns ANSI colours when color is true, else a Style whose
// sequences are all empty.
func NewStyle(color bool) *Style {
	if !color {
		return &Style{}
	}
	return &Style{
		Bold: "\x1b[1m", Dim: "\x1b[2m", Underline: "\x1b[4m",
		Red: "\x1b[31m", Green: "\x1b[32m", Yellow: "\x1b[33m", Blue: "\x1b[34m",
		Magenta: "\x1b[35m", Cyan: "\x1b[36m", Reset: "\x1b[0m",
	}
}

// on reports whether the style emits any sequence.
func (s *Style) on() bool { return s != nil && s.Reset != "" }

// paint wraps text in the sequence pick chooses, or returns it as is.
func (s *Style) paint(pick func(*Style) string, text string) string {
	if !s.on() || text == "" {
		return text
	}
	return pick(s) + text + s.Reset
}

func bold(s *Style) string     { return s.Bold }
func dim(s *Style) string      { return s.Dim }
func red(s *Style) string      { return s.Red }
func green(s *Style) string    { return s.Green }
func yellow(s *Style) string   { return s.Yellow }
func cyan(s *Style) string     { return s.Cyan }
func link(s *Style) string     { return s.Blue + s.Underline }
func boldRed(s *Style) string  { return s.Bold + s.Red }
func boldCyan(s *Style) string { return s.Bold + s.Cyan }
