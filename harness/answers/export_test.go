package answers

// Exhaustive returns a Tracker that walks every READ where the Tracker
// uses its indexes: the model as defined, to compare with.
func Exhaustive() *Tracker { return &Tracker{exhaustive: true} }

// ForgetPackets clears the Packets counts the READs of t cache.
func ForgetPackets(t *Tracker) {
	for _, q := range t.reads {
		q.pmtu, q.pn = 0, 0
	}
}
