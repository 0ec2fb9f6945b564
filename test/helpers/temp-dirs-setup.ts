import { removeTempDirs } from './temp-dirs';

// jest `setupFilesAfterEnv`: runs in every test file, so the directories of tempDirSync (testApp's
// cdk.out among them) go when their file ends, passed or failed.
afterAll(removeTempDirs);
