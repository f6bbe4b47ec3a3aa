// Anchor for the hark_decode library until its sources land.
