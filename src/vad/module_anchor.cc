// Anchor for the hark_vad library until its sources land.
