// Package migrate brings a klimax installation over to marina: it finds
// where klimax kept its state (~/.klimax, ~/.kube/klimax, its skill),
// converts its config, adopts its VM, network, mirrors and clusters, and
// moves folders so that nothing is lost at any point, whichever step a run
// stops at (its journal resumes it).
package migrate
