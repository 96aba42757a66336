package warrant

import (
	"fmt"
	"slices"
	"testing"
)

// TestNamesLayers: a layer over a Names finds its base's names and its own, and adding
// to it leaves the base as it was (the base may be shared between crawl runs); growing a
// chain past maxNameLayers flattens it into one index holding every name once.
func TestNamesLayers(t *testing.T) {
	base := NewNames([]string{"read_file", "send_mail"})
	layer := base.Over()
	layer.Add("read_f\u0456le", "read_file")
	if got, want := layer.ConfusableWith("read_file"), []string{"read_f\u0456le"}; !slices.Equal(got, want) {
		t.Errorf("layer: ConfusableWith(read_file) = %q, want %q", got, want)
	}
	if got := base.ConfusableWith("read_file"); len(got) != 0 {
		t.Errorf("adding to a layer changed its base: ConfusableWith(read_file) = %q", got)
	}
	if got, want := layer.ConfusableWith("send_ma\u0456l"), []string{"send_mail"}; !slices.Equal(got, want) {
		t.Errorf("layer: ConfusableWith(send_maіl) = %q, want the base's %q", got, want)
	}
	n := base
	for i := range 3 * maxNameLayers {
		n = n.grow([]string{fmt.Sprintf("tool_%02d", i), "send_mail"})
		if n.depth > maxNameLayers {
			t.Fatalf("after %d grows the chain is %d layers deep, more than %d", i+1, n.depth, maxNameLayers)
		}
	}
	if got, want := n.ConfusableWith("send_ma\u0456l"), []string{"send_mail"}; !slices.Equal(got, want) {
		t.Errorf("grown: ConfusableWith(send_maіl) = %q, want %q (once)", got, want)
	}
	if got, want := n.ConfusableWith("t\u03bfol_05"), []string{"tool_05"}; !slices.Equal(got, want) {
		t.Errorf("grown: ConfusableWith(tοol_05) = %q, want %q", got, want)
	}
	if got := base.ConfusableWith("t\u03bfol_05"); len(got) != 0 {
		t.Errorf("growing changed the base: %q", got)
	}
	var none *Names
	if got := none.ConfusableWith("x"); got != nil {
		t.Errorf("nil Names: %q", got)
	}
}
