// Anchor for the hark_serve library until its sources land.
