// Anchor for the hark_audio library until its sources land.
