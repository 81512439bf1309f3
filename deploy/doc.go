// Package deploy holds the files a fleet is deployed with — the container image definition
// (Containerfile) and Kubernetes manifests (kubernetes/) — and the tests that keep them right:
// the manifests are decoded and cross-checked (selectors, secrets, probes, grace periods, the
// embedded configuration parsed by the real parser), the image's final stage is built on a
// stand-in base and run as the manifests run it (TestImage), and the whole image is built where
// the machine reaches a registry (docs/operations.md, "The image").
package deploy
