// Package migrate brings a klimax installation over to marina: where
// klimax kept its state (~/.klimax, ~/.kube/klimax, its skill), and moving
// folders between them so that nothing is lost at any point, whichever
// step a run stops at.
package migrate
