-- releaselease: ARGV 2 id, 3 token. Drops the lease only if it is still this holder's.
release_if_mine(ARGV[2], ARGV[3])
return {'OK'}
