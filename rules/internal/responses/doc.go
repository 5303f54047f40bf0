// Package responses holds what the "responses" group of rules shares
// beyond the reconstruction (harness/answers): the passive monitor that
// C9-100 and C9-112 share (one meaning, two clause numbers), and the
// helpers the group's active scenarios use.
package responses
