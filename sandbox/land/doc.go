// Package land vets what a transactional run wrote (the overlay's upper layer) and lands
// the accepted changes in the project: a walk, a pure decision per change, an applier.
package land
