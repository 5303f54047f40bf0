//go:build !(verbs && linux && cgo)

package main

func openDevice(o Options) (device, error) { return nil, errNoVerbs }
