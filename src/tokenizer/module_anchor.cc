// Anchor for the hark_tokenizer library until its sources land.
