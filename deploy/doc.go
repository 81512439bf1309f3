// Package deploy holds the files a fleet is deployed with — the container image definition
// (Containerfile) and Kubernetes manifests (kubernetes/) — and the tests that keep them right:
// the manifests are decoded and cross-checked (selectors, secrets, probes, grace periods, the
// embedded configuration parsed by the real parser), and the image is built where the machine
// can build one (docs/operations.md).
package deploy
