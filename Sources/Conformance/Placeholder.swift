// Placeholder until the Conformance module lands.
