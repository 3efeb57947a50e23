//go:build !race

package enginetest

const raceBuild = false
