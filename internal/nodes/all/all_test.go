package all

import (
	"reflect"
	"testing"
)

// TestCLI: every kind of CLI is registered, once, and a flag two kinds
// share is the same flag (the command line shows one text for it).
func TestCLI(t *testing.T) {
	r := Registry(nil)
	seen := map[string]bool{}
	flags := map[string]any{}
	for _, k := range CLI() {
		if seen[k.Kind] || !r.Has(k.Kind) {
			t.Errorf("kind %q: described twice, or not registered", k.Kind)
		}
		seen[k.Kind] = true
		if k.Usage == "" || k.Help == "" || k.Options == nil {
			t.Errorf("kind %q has no usage, help or options", k.Kind)
		}
		for _, f := range k.Flags {
			if other, ok := flags[f.Name]; ok && !reflect.DeepEqual(other, *f) {
				t.Errorf("flag --%s of %s differs from another kind's: %+v vs %+v", f.Name, k.Kind, *f, other)
			}
			flags[f.Name] = *f
		}
	}
}
