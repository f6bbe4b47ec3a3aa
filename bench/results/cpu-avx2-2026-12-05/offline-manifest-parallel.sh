#!/bin/bash
# CPU offline: transcribe --manifest over 16 x 30 s files, --parallel 1 against 8, alternated.
H=/work/main/build/bin/hark
for m in tiny tiny base; do for p in 1 8; do
  rm -rf out-$m-$p
  echo "$m p=$p $($H transcribe --manifest list.txt -o out-$m-$p --no-progress --model synthetic:$m --threads 2 --language en --without-timestamps --sample-len 100 --temperature 0 --temperature-increment-on-fallback none --parallel $p 2>&1 | tail -1)"
done; 
  d=0; for f in $(cd out-$m-1 && find . -name '*.txt'); do cmp -s out-$m-1/$f out-$m-8/$f || d=$((d+1)); done; echo "$m differing files: $d"
done
