package main

import "testing"

// The example trains on a synthetic MNIST-shaped set (written as MNIST's
// IDX files, read back by data.LoadMNIST) and classifies held-out images.
func TestTheExampleLearnsSyntheticDigits(t *testing.T) {
	dir := t.TempDir()
	if err := writeSynthetic(dir, "train", 600, 1); err != nil {
		t.Fatal(err)
	}
	if err := writeSynthetic(dir, "t10k", 200, 2); err != nil {
		t.Fatal(err)
	}
	acc, err := run(dir, 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.9 {
		t.Fatalf("test accuracy %.3f", acc)
	}
}
